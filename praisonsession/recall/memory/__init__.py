"""Memory: a session's short-term notes (a message log in the session) and a user's long-term
memories (a vector collection), and the prompt context built from what they recall."""
