"""_send."""
