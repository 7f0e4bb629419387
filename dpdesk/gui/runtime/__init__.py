"""What runs the views: the session (the model's state plus the task runner), the task runner and its
line, and how views subscribe to the model's events."""
