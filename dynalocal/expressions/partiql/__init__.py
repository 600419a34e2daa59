"""DynamoDB's PartiQL dialect: lexer, parser, statement AST and the renderer to expression text."""
