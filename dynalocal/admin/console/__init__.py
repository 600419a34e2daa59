"""The web console's static files (HTML, JS, CSS), served at /_dynalocal/console by the server itself."""
