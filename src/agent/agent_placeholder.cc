namespace tidal {}
