"""How people join: staff invitations (/accounts/invitations/, a one-time link each), accepting one
(/accounts/invite/<token>/: choose a username and a password, then logged in), and open sign-up
with staff approval (/accounts/signup/, only with ARENA_OPEN_SIGNUP=1: a 404 otherwise)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import login
from django.contrib.auth.views import LoginView
from django.core.mail import send_mail
from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from arena.teams import membership

from .forms import InvitationForm, JoinForm, LoginForm, SignUpForm
from .models import Invitation, SignUp

log = logging.getLogger(__name__)

BACKEND = "django.contrib.auth.backends.ModelBackend"  # who logs a new user in (axes' backend checks only)
INVITATION_GONE = {
    "used": "This invitation has already been used. Each link makes one account: ask for a new one.",
    "revoked": "This invitation was withdrawn. Ask the person who invited you for a new one.",
    "expired": "This invitation has expired. Ask the person who invited you for a new one.",
}
INVITATION_UNKNOWN = "There is no invitation at this address. Check that the link was copied whole."
INVITATION_TAKEN_MEANWHILE = "This invitation was used or withdrawn while you filled in the form."
MAIL_FAILED = "The e-mail could not be sent ({error}); copy the link below and pass it on yourself."
MAIL_SENT = "The link was also sent to {email}."
MAIL_NOT_SET = "No mail server is set (EMAIL_HOST), so nothing was sent to {email}: send this link yourself."
# Backends that deliver nothing: the console prints the mail in the server's log, dummy drops it,
# filebased writes it to disk. Saying "sent" after those would send staff waiting for nothing.
UNDELIVERED_BACKENDS = frozenset({"django.core.mail.backends.console.EmailBackend",
                                  "django.core.mail.backends.dummy.EmailBackend",
                                  "django.core.mail.backends.filebased.EmailBackend"})


class ArenaLoginView(LoginView):
    authentication_form = LoginForm

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "open_signup": settings.ARENA_OPEN_SIGNUP}


def _invitation_mail(request, token: str, invitation: Invitation) -> str:
    link = request.build_absolute_uri(reverse("invitation-accept", args=[token]))
    inviter = request.user.get_full_name() or request.user.get_username()
    return (f"{inviter} invites you to LLM Arena, where your team compares language models.\n\n"
            f"Open this link to choose a username and a password:\n\n{link}\n\n"
            f"The link works once and expires on {invitation.expires_at:%d %b %Y at %H:%M} UTC.\n")


# --- staff: invitations and approvals -------------------------------------------------------
@never_cache  # the answer that shows a new link must not stay in any cache
@staff_member_required
@require_http_methods(["GET", "POST"])
def invitations_page(request):
    new_link = mail_note = None
    form = InvitationForm(request.POST) if request.method == "POST" else InvitationForm()
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        token, invitation = Invitation.create(request.user, email=data["email"], note=data["note"], days=data["days"],
                                              team=data["team"])
        new_link = request.build_absolute_uri(reverse("invitation-accept", args=[token]))
        if invitation.email and settings.EMAIL_BACKEND in UNDELIVERED_BACKENDS:
            mail_note = MAIL_NOT_SET.format(email=invitation.email)
        elif invitation.email:
            try:
                send_mail("Your invitation to LLM Arena", _invitation_mail(request, token, invitation), None,
                          [invitation.email])
                mail_note = MAIL_SENT.format(email=invitation.email)
            except OSError as exc:  # SMTP refused or unreachable: the link on the page still works
                log.warning("invitation e-mail to %s failed: %s", invitation.email, exc)
                mail_note = MAIL_FAILED.format(error=exc)
        form = InvitationForm()
    return render(request, "accounts/invitations.html", {
        "form": form, "new_link": new_link, "mail_note": mail_note,
        "invitations": Invitation.objects.select_related("created_by", "used_by", "team"),
        # A user staff activated some other way (the admin's user page) waits for nothing.
        "waiting": SignUp.objects.filter(approved_at__isnull=True, user__is_active=False).select_related("user"),
        "open_signup": settings.ARENA_OPEN_SIGNUP, "default_days": settings.ARENA_INVITATION_DAYS,
    }, status=400 if form.errors else 200)


@staff_member_required
@require_POST
def invitation_revoke(request, invitation_id):
    get_object_or_404(Invitation, id=invitation_id).revoke()
    return redirect("invitations")


@staff_member_required
@require_POST
def sign_up_decide(request, sign_up_id, decision):
    sign_up = get_object_or_404(SignUp, id=sign_up_id)
    if decision == "approve":
        sign_up.approve(request.user)
    else:
        sign_up.refuse()
    return redirect("invitations")


# --- the invitee ----------------------------------------------------------------------------
@never_cache
@require_http_methods(["GET", "POST"])
def invitation_accept(request, token):
    invitation = Invitation.objects.find(token)
    if invitation is None:
        return render(request, "accounts/invitation_gone.html", {"reason": INVITATION_UNKNOWN}, status=404)
    if invitation.state != "pending":
        return render(request, "accounts/invitation_gone.html", {"reason": INVITATION_GONE[invitation.state]},
                      status=410)
    form = JoinForm(request.POST) if request.method == "POST" else JoinForm()
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            user = form.save(commit=False)
            user.email = invitation.email
            user.save()
            if not invitation.claim(user):
                transaction.set_rollback(True)  # the user is not made: the link was used meanwhile
                return render(request, "accounts/invitation_gone.html", {"reason": INVITATION_TAKEN_MEANWHILE},
                              status=410)
            if invitation.team is not None:
                membership.add_member(invitation.team, user)
        login(request, user, backend=BACKEND)
        return redirect(settings.LOGIN_REDIRECT_URL)
    return render(request, "accounts/invitation_accept.html", {"form": form, "invitation": invitation},
                  status=400 if form.errors else 200)


@never_cache
@require_http_methods(["GET", "POST"])
def sign_up(request):
    if not settings.ARENA_OPEN_SIGNUP:
        raise Http404("Sign-up is closed: ask a staff member for an invitation.")
    if request.GET.get("sent") == "1":
        return render(request, "accounts/signup.html", {"sent": True})
    form = SignUpForm(request.POST) if request.method == "POST" else SignUpForm()
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            user = form.save(commit=False)
            user.is_active = False  # until a staff member approves it
            user.save()
            SignUp.objects.create(user=user)
        return redirect(reverse("signup") + "?sent=1")
    return render(request, "accounts/signup.html", {"form": form}, status=400 if form.errors else 200)
