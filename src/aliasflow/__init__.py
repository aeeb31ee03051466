"""aliasflow: hidden data flow between operations on aliasing tensor views."""
