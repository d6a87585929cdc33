"""Reading: the survey, the page reads and their queries, the due queries of per-event
leases, the events without a partition or schedule."""
