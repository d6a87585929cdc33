"""Re-drive: send delivered (or any) events again, to the configured publisher or a URL
named for the job, as a job in Firestore that survives crashes (docs/redrive.md).

- `selection`: which events (`Selection`: time range, event types, aggregate, statuses) and
  the query per partition;
- `reading`: the events from a job's cursor (`Position`) on, in delivery order;
- `preview`: the dry run (count, first and last, per type);
- `job`: the job document as read, its states and an operator's moves;
- `jobs`: the writes on it and its lease (conditional writes);
- `targets`: where a job sends, built through the publishers' registry;
- `runner`: one run of a job (its rate, its lease, its progress);
- `service`: `Redrive`, all of it wired from the relay's settings.
"""
