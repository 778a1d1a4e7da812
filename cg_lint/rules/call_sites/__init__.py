"""Call-site rules: how custom-gradient functions are called in the same file."""
