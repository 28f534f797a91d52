"""Result objects, their versioned JSON, the schemas and the history store."""
