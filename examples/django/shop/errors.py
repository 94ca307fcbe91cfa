class PaymentDeclined(Exception):
    """What charge() raises for a card it refuses."""
