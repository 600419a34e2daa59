"""dynalocal's HTTP/1.1 layer on httptools, its ASGI face and the journaled answer path; wire plug-ins in plugins/."""
