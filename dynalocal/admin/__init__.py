"""What users read over HTTP: admin routes, their guard, the diagnosis endpoints and the console's assets."""
