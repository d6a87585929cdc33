"""Settling: one conditional write per event, grouped, retried, counted."""
