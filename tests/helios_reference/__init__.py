"""A literal, second-by-second reference of the Helios simulator, for tests only."""
