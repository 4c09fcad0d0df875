"""Where bytes come from: the Hugging Face Hub, local files and folders, read through range readers."""
