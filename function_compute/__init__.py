"""Alibaba Cloud Function Compute adapters. Importing them connects to nothing."""
