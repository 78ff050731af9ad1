"""_fast"""
