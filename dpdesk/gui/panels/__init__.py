"""The Requests page's panels: the answer panel (its actions, words and plan view), the budget panel
and the watched claims."""
