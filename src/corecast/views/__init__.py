"""Views: render a prediction, a sweep, a replay or a merge as text, PNG or HTML.

They take results and format them; they never call a model."""
