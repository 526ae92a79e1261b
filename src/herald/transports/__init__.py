"""Transports drive a `Connection` with bytes; they hold no protocol rules of their own."""
