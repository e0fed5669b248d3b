"""`envcheck guard`: run a training command, sample its memory cheaply, alert by rules (TOML), and save the scene
(post-mortem, timeline) when it dies. `envcheck alerts`: the same rules for Prometheus."""
