"""oasis.engine"""
