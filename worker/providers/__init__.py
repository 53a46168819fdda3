"""Providers: one module per vendor or agent, each with its pure wire converters beside it."""
