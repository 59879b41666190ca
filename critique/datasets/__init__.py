"""Datasets: the on-disk split format, validation, generators and builders."""

from critique.datasets.splits import Dataset, DatasetCard, DatasetError, Item, load_dataset, write_dataset

__all__ = ["Dataset", "DatasetCard", "DatasetError", "Item", "load_dataset", "write_dataset"]
