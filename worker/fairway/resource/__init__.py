"""The resource layer: the `QueueSupervisor` model, its cross-field rules, its status and the CRD.

The bottom layer: pure pydantic models and tables, no I/O. Every other layer speaks its vocabulary
(queue names, balance modes, tenant settings), so each name and each default is written here once.
"""
