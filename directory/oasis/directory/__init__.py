"""oasis.directory"""
