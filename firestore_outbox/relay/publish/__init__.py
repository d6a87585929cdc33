"""Publishing: the pool a drain hands events to, one attempt each, the circuit breaker."""
