"""oasis.freshness"""
