"""Knowledge: files, folders, pages and text, chunked into a searchable vector collection."""

from .knowledge_base import KnowledgeAdded, KnowledgeBase

__all__ = ["KnowledgeAdded", "KnowledgeBase"]
