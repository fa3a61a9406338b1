import { useState } from 'preact/hooks';
import type { CognitoClient, Session } from '../lib/cognito';
import { ErrorBox, Field, Submit, useAction } from './components';

type Step = 'signin' | 'signup' | 'confirm' | 'forgot' | 'reset';

/** Sign-in, sign-up with its e-mailed code, and a forgotten password, on the user pool. */
export const AuthPage = ({ cognito, onSignedIn }: { cognito: CognitoClient; onSignedIn: (session: Session) => void }) => {
  const [step, setStep] = useState<Step>('signin');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [notice, setNotice] = useState('');
  const { busy, error, run } = useAction();
  const go = (next: Step, message = '') => {
    setStep(next);
    setNotice(message);
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (step === 'signin') {
      const session = await run(() => cognito.signIn(email, password));
      if (session) onSignedIn(session);
    } else if (step === 'signup') {
      const answer = await run(() => cognito.signUp(email, password));
      if (answer) answer.UserConfirmed ? go('signin', 'Your account is ready: sign in.') : go('confirm', `We sent a code to ${email}.`);
    } else if (step === 'confirm') {
      if (!(await run(() => cognito.confirmSignUp(email, code).then(() => true)))) return;
      const session = password ? await cognito.signIn(email, password).catch(() => undefined) : undefined;
      if (session) onSignedIn(session);
      else go('signin', 'Your e-mail address is confirmed: sign in.');
    } else if (step === 'forgot') {
      if (await run(() => cognito.forgotPassword(email).then(() => true))) go('reset', `We sent a code to ${email}.`);
    } else if (await run(() => cognito.confirmForgotPassword(email, code, password).then(() => true))) {
      go('signin', 'Your password is changed: sign in with it.');
    }
  };

  const titles: Record<Step, string> = {
    signin: 'Sign in',
    signup: 'Create an account',
    confirm: 'Confirm your e-mail address',
    forgot: 'Forgot your password',
    reset: 'Choose a new password',
  };
  return (
    <main class="auth">
      <h1>Fleetstream</h1>
      <form onSubmit={submit} aria-labelledby="auth-title">
        <h2 id="auth-title">{titles[step]}</h2>
        {notice && <p role="status">{notice}</p>}
        <Field label="E-mail address">
          <input type="email" name="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        {(step === 'confirm' || step === 'reset') && (
          <Field label="Code from the e-mail">
            <input name="code" inputMode="numeric" autocomplete="one-time-code" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          </Field>
        )}
        {step !== 'forgot' && (
          <Field
            label={step === 'reset' ? 'New password' : 'Password'}
            hint={step === 'signup' || step === 'reset' ? 'At least 12 characters, with upper and lower case letters and a digit.' : undefined}
          >
            <input
              type="password"
              name="password"
              autocomplete={step === 'signin' ? 'current-password' : 'new-password'}
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </Field>
        )}
        <ErrorBox error={error} />
        <Submit busy={busy}>
          {step === 'signin'
            ? 'Sign in'
            : step === 'signup'
              ? 'Create account'
              : step === 'forgot'
                ? 'Send a code'
                : step === 'confirm'
                  ? 'Confirm'
                  : 'Change password'}
        </Submit>
        <nav class="auth-links" aria-label="Other sign-in steps">
          {step !== 'signin' && (
            <button type="button" class="link" onClick={() => go('signin')}>
              Back to sign-in
            </button>
          )}
          {step === 'signin' && (
            <>
              <button type="button" class="link" onClick={() => go('signup')}>
                Create an account
              </button>
              <button type="button" class="link" onClick={() => go('forgot')}>
                Forgot your password?
              </button>
              <button type="button" class="link" onClick={() => go('confirm')}>
                I have a code
              </button>
            </>
          )}
          {step === 'confirm' && (
            <button type="button" class="link" onClick={() => run(() => cognito.resendCode(email).then(() => setNotice(`We sent a new code to ${email}.`)))}>
              Send a new code
            </button>
          )}
        </nav>
      </form>
    </main>
  );
};
