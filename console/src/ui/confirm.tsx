import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** What a confirmation asks: its question, the consequence in words, and the button that goes ahead. */
export interface ConfirmRequest {
  title: string;
  /** What will happen, and what will be lost: said in words, read by screen readers as the dialog's description. */
  consequence: ComponentChildren;
  /** The button that goes ahead, naming the action ("Revoke the key", "Schedule on 14 devices"). */
  confirmLabel: string;
}

/**
 * A modal confirmation (`<dialog>` opened with showModal): focus moves to Cancel (the safe
 * choice), Tab stays inside, Escape cancels, and focus returns to what had it when it closes.
 */
const ConfirmDialog = ({ title, consequence, confirmLabel, onClose }: ConfirmRequest & { onClose: (confirmed: boolean) => void }) => {
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    cancel.current?.focus();
    return () => {
      if (dialog?.open) dialog.close();
      opener?.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-consequence"
      data-testid="confirm-dialog"
      onCancel={(e) => {
        // Escape: cancel, and let the component close it
        e.preventDefault();
        onClose(false);
      }}
    >
      <h2 id="confirm-title">{title}</h2>
      <div id="confirm-consequence" data-testid="confirm-consequence">
        {consequence}
      </div>
      <div class="toolbar">
        <button type="button" ref={cancel} onClick={() => onClose(false)}>
          Cancel
        </button>
        <button type="button" class="danger" data-testid="confirm" onClick={() => onClose(true)}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
};

/**
 * A confirmation a page can ask: `ask` opens the dialog and resolves true when the person goes
 * ahead, false on Cancel or Escape; `dialog` is rendered where the page puts it.
 */
export const useConfirm = () => {
  const [open, setOpen] = useState<(ConfirmRequest & { resolve: (confirmed: boolean) => void }) | undefined>(undefined);
  const ask = (request: ConfirmRequest) => new Promise<boolean>((resolve) => setOpen({ ...request, resolve }));
  const dialog = open ? (
    <ConfirmDialog
      {...open}
      onClose={(confirmed) => {
        open.resolve(confirmed);
        setOpen(undefined);
      }}
    />
  ) : null;
  return { ask, dialog };
};
