"""RAC for CrewAI."""
