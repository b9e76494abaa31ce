"""latentfuzz Streamlit dashboard: entry (app.py) and shared components."""
