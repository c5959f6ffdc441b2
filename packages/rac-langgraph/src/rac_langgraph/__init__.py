"""RAC for LangGraph."""
