"""Models of the leaderboards app."""
