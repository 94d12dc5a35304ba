"""Compile a Diagram once into a Plan, then drive the Plan through time."""
from .plan import Plan, compile_diagram

__all__ = ["Plan", "compile_diagram"]
