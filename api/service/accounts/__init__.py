"""Accounts of the steward service: users, API tokens, sessions, roles and their database grants.

Everything lives in the shared graph (never in a process), so any number of API
processes behind a load balancer agree on who may do what the moment it changes.
"""
