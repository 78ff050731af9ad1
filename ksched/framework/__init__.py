"""framework"""
