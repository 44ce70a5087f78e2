"""_client."""
