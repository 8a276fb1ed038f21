"""HTTP pieces every server shares: JSON bodies and errors, the request guard, throttles and timeouts."""
