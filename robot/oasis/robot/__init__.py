"""oasis.robot"""
