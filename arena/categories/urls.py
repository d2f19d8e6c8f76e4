from django.urls import path

from . import api, views

urlpatterns = [
    path("categories/", views.categories, name="categories"),
    path("categories/assignments/<uuid:assignment_id>/", views.set_category, name="category-set"),
    path("categories/add/", views.add_category, name="category-add"),
    path("categories/rules/add/", views.add_rule, name="category-rule-add"),
    path("categories/rules/<int:rule_id>/delete/", views.delete_rule, name="category-rule-delete"),
    path("api/v1/categories", api.categories, name="api-categories"),
]
