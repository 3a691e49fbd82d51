"""Geography and time: service areas, opening hours, scheduling, geocoding."""
