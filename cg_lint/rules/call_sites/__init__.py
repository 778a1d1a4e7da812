"""Call-site rules (CG008), one module per rule."""
