"""oasis.replay"""
