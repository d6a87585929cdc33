"""Reading: the queries for open and due events, pages in aggregate order, healing."""
