"""The example shop's tasks: plain functions under Django's @task."""
from django.tasks import task
from django.tasks.base import TaskContext

from shop.errors import PaymentDeclined


@task(queue_name="receipts")
def send_receipt(order: int, email: str) -> str:
    return f"receipt for order {order} sent to {email}"


@task
def charge(order: int, card: str) -> dict:
    if card == "declined":
        raise PaymentDeclined(f"card refused for order {order}")
    return {"order": order, "charged": True}


@task(takes_context=True)
def flaky(context: TaskContext, order: int) -> int:
    """Fails its first attempt; succeeds on the second (MAX_ATTEMPTS is 2)."""
    if context.attempt < 2:
        raise RuntimeError("first attempt fails")
    return context.attempt


@task(priority=50)
async def notify(order: int) -> str:
    return f"order {order} shipped"
