"""R5 MKCT memory on LevelDB, free of Django and Celery."""
