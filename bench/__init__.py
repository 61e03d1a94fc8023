"""oasis.bench"""
