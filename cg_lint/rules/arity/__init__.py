"""Arity rules: the forward's return pair, grad's upstream parameters, grad's gradient count."""
