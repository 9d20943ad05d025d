"""Hostile plugins against real runners: each test is an attack that must fail."""
