"""Claiming: partition leases (claims, renewals, releases) and per-event leases."""
