"""oasis.web"""
