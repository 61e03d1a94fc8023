"""oasis.broker"""
