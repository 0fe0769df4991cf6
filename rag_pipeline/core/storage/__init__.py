"""The storage stage: where every table lives. Parquet is the truth (:mod:`.warehouse`:
``Warehouse``, immutable table files and a pointer per partition written last, local or on an
object store); the tables' names (:mod:`.table_names`), the version stamps on every row
(:mod:`.versions`), and frozen dataclasses to Arrow tables and back (:mod:`.row_tables`)."""
