"""The `eventbridge` publisher (`publisher`, which imports the EventBridge SDK) and its
settings (`settings`, which does not)."""
