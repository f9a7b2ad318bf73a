"""Chapter 2 shop: a stock snapshot, prices, strict argument models and three tools."""

from __future__ import annotations

import copy
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from .tool_dispatch import Dispatcher, ExecutableTool, ToolCall

__all__ = [
    "DraftArguments",
    "NoArguments",
    "PRICES",
    "ProductArguments",
    "SHOP",
    "ToolCall",
    "build_tools",
]

SHOP: dict[str, Any] = {
    "currency": "USD",
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 4, "reorder_point": 10},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 3, "reorder_point": 7},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 12, "reorder_point": 8},
    ],
}
"""Stock snapshot; a product needs reorder_point - on_hand units when that is positive."""

PRICES: dict[str, int] = {"SKU-VANILLA": 250, "SKU-STRAWBERRY": 275, "SKU-CHOCOLATE": 300}
"""Supplier unit prices in USD cents."""


class NoArguments(BaseModel):
    """Arguments of a tool that takes none."""

    model_config = ConfigDict(strict=True, extra="forbid")


class ProductArguments(BaseModel):
    """Arguments naming one product."""

    model_config = ConfigDict(strict=True, extra="forbid")

    sku: str = Field(min_length=1, description="Product identifier, for example SKU-VANILLA.")


class DraftArguments(BaseModel):
    """Arguments of a replenishment draft."""

    model_config = ConfigDict(strict=True, extra="forbid")

    sku: str = Field(min_length=1, description="Product identifier, for example SKU-VANILLA.")
    quantity: int = Field(gt=0, le=1000, description="Units to draft; must equal the product's need.")


def build_tools(shop: Mapping[str, Any]) -> Dispatcher:
    """A dispatcher for list_stock, supplier and draft_order over a private copy of shop."""
    snapshot = copy.deepcopy(dict(shop))
    rows = {row["sku"]: row for row in snapshot["products"]}

    def need(sku: str) -> int:
        row = rows[sku]
        return max(0, row["reorder_point"] - row["on_hand"])

    def list_stock(_: NoArguments) -> dict[str, Any]:
        return {"products": [{**row, "needed": need(row["sku"])} for row in snapshot["products"]]}

    def supplier(arguments: ProductArguments) -> dict[str, Any]:
        if arguments.sku not in PRICES:
            raise ValueError(f"no supplier price for {arguments.sku!r}; priced: {sorted(PRICES)}")
        return {"sku": arguments.sku, "unit_price_cents": PRICES[arguments.sku]}

    def draft_order(arguments: DraftArguments) -> dict[str, Any]:
        if arguments.sku not in rows or arguments.sku not in PRICES:
            raise ValueError(f"unknown product {arguments.sku!r}; known: {sorted(rows)}")
        needed = need(arguments.sku)
        if arguments.quantity != needed:
            raise ValueError(
                f"a draft for {arguments.sku} must be for the needed {needed} units, not {arguments.quantity}"
            )
        unit = PRICES[arguments.sku]
        return {
            "sku": arguments.sku,
            "quantity": arguments.quantity,
            "unit_price_cents": unit,
            "total_cents": unit * arguments.quantity,
            "status": "DRAFT",
        }

    tools = [
        ExecutableTool("list_stock", "List every product with stock, reorder point and need.", NoArguments, list_stock),
        ExecutableTool("supplier", "Read the supplier unit price of one product in USD cents.", ProductArguments, supplier),
        ExecutableTool(
            "draft_order",
            "Prepare a replenishment draft for exactly the needed quantity; never purchases.",
            DraftArguments,
            draft_order,
        ),
    ]
    return Dispatcher(tools, allowed={tool.name for tool in tools})
